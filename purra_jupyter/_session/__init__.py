"""``McpSession``, the one object a person holds, composed of parts that each own one concern; ``connect``; and
``evaluate`` over several sessions.
"""
