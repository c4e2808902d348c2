"""One connection's life over a transport: the SDK's client session under purra-mcp's monitor, the kit's waits on it,
and the one seam where what they raise becomes a kit code.
"""
