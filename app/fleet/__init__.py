"""The fleet: every cluster the service reads, each with its own connection and live model."""
