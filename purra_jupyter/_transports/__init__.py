"""How a session reaches its server: the one ingress of a server's messages and the three transports (stdio, Streamable
HTTP, in memory), with OAuth for HTTP.
"""
