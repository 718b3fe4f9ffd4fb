"""Elmo: the controller that clusters switches into p-rules and s-rules, and the encoder."""
