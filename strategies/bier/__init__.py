"""BIER (RFC 8279, RFC 8296): BIFT install and the BFIR's bitstrings, as P4-BIER runs them."""
