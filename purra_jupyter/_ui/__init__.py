"""The notebook's widgets: approvals, forms, records, the status line, authorization and tools' views. Only here and in
``magics`` does the kit use IPython and ipywidgets.
"""
