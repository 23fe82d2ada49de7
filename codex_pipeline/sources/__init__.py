"""Readers that turn a landing day folder into validated documents and rejects."""
