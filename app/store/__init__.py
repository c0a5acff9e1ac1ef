"""Past one process: shards own clusters and write what they see to a shared Redis; API replicas answer from it."""
