"""The shared store of the sharded mode (issue 24): claims of units by shards, and the Redis store."""
