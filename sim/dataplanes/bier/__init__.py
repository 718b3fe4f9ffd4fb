"""Bit Index Explicit Replication: the RFC 8296 header and BIFT forwarding as P4-BIER does it."""
