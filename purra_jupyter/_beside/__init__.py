"""What a server offers beside PurrA's contract: resources, templates, prompts, completions, and tools' own views (MCP
Apps).
"""
