"""The kit's foundations: its words and codes, the doors of each medium, the formats it reads and writes, and the one
event loop. Nothing here knows MCP's client.
"""
