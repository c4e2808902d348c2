"""The PurrA path: a server's catalog and PurrA's verdicts with their hints, the bindings, envelopes, and the one call
lifecycle.
"""
