"""Small tools every room uses: ``clock`` (the one injectable clock), ``timefmt`` (RFC 3339 and
durations, written and read one way), ``ratelimit`` (the token bucket), ``host`` (memory and
disk readings of the host) and ``exports`` (the table the public namespaces are made from)."""
