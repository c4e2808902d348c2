/** The MIME types this front end draws, typed once (purra_jupyter/wire.py holds the same strings). */

/** What a PurrA host gets from a bound tool. */
export const ENVELOPE_MIME = 'application/vnd.purra.envelope+json';
/** A raw tools/call result, outside the PurrA contract. */
export const RAW_RESULT_MIME = 'application/vnd.purra.raw-result+json';
/** A server's tool catalog with PurrA verdicts. */
export const CATALOG_MIME = 'application/vnd.purra.catalog+json';
/** A widget output of the kit: its model id and static view (wire.py: WIDGET_MIME). */
export const WIDGET_MIME = 'application/vnd.purra.widget+json';
/** ipywidgets' own view of a widget (wire.py: WIDGET_VIEW_MIME). */
export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';
/** A tool's own view (MCP Apps). */
export const APP_MIME = 'application/vnd.purra.app+json';
