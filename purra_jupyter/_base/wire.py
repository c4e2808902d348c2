"""Strings that cross a boundary (error codes, log event kinds, states), defined once.

Codes that purra-mcp already defines (``mcp_timeout``, ``mcp_connection_closed``,
``mcp_protocol_unsupported`` ...) are reused with the same spelling, so a notebook shows
the code a PurrA host would log.
"""

from __future__ import annotations

# Error codes introduced by purra-jupyter.
CONFIG_INVALID = "mcp_config_invalid"
CONNECT_FAILED = "mcp_connect_failed"
INTERRUPTED = "mcp_interrupted"
SESSION_EXISTS = "mcp_session_exists"
SESSION_UNKNOWN = "mcp_session_unknown"

DIGEST_MISMATCH = "mcp_digest_mismatch"
APPROVAL_DENIED = "mcp_approval_denied"
NOT_TABULAR = "mcp_result_not_tabular"
NOT_CONCURRENCY_SAFE = "mcp_evaluate_not_concurrency_safe"
CHECKS_FAILED = "mcp_checks_failed"  # assert_checks: rows of an evaluation did not pass (a headless run fails)
HOST_ERROR = "mcp_host_error"  # the host's own code failed (a scope validator, a check), not the server
KIT_ERROR = "mcp_kit_error"  # a bug in purra-jupyter itself: the call settles with it, the traceback is raised
PURRA_INCOMPATIBLE = "mcp_purra_incompatible"  # the installed purra / purra-mcp is not the pinned one
RATE_LIMITED = "mcp_rate_limited"  # HTTP 429 to one request; its message carries the server's Retry-After
AUTH_REQUIRED = "mcp_auth_required"  # HTTP 401 or 403: the server wants (other) credentials
# The MCP authorization flow (``pj.OAuth``): each failure has its code; no message holds a token, code or secret.
AUTH_FAILED = "mcp_auth_failed"  # discovery or the flow itself failed (no metadata, no authorization endpoint)
AUTH_DENIED = "mcp_auth_denied"  # the authorization server sent the browser back with an error
AUTH_STATE_MISMATCH = "mcp_auth_state_mismatch"  # the address given back is not this request's (state)
AUTH_REGISTRATION_FAILED = "mcp_auth_registration_failed"  # dynamic client registration was refused
AUTH_TOKEN_FAILED = "mcp_auth_token_failed"  # the token endpoint refused the code or the refresh token
AUTH_RESOURCE_MISMATCH = "mcp_auth_resource_mismatch"  # the protected resource names another server
AUTH_ISSUER_MISMATCH = "mcp_auth_issuer_mismatch"  # authorization server metadata names another issuer (RFC 8414)
AUTH_INSECURE = "mcp_auth_insecure"  # an authorization endpoint over http:// to a host that is not loopback
AUTH_CANCELED = "mcp_auth_canceled"  # the person canceled the authorization (nothing pasted) or never finished it
SESSION_EXPIRED = "mcp_session_expired"  # HTTP 404 to the session's id: the server ended it; reconnect
NOT_READ_ONLY = "mcp_not_read_only"  # a read declaration of a tool its server marks as not read-only
CAPABILITY_MISSING = "mcp_capability_missing"  # asked of a server what its capabilities do not offer (logging ...)
APP_UNAVAILABLE = "mcp_app_unavailable"  # a tool's view (its ui:// resource) cannot be read or is not a view
APP_REFUSED = "mcp_app_refused"  # a request of a view the kit does not forward (see _beside/views.py)
OFFERING_UNKNOWN = "mcp_offering_unknown"  # a resource, resource template or prompt the server does not list
# A server's question to the client (sampling, elicitation): the server gets an error; the session log says which.
ANSWER_FAILED = "mcp_answer_failed"  # the session's handler raised, or no person could be asked
ANSWER_INVALID = "mcp_answer_invalid"  # the handler's answer is not the result the question takes
QUESTION_DECLINED = "mcp_question_declined"  # the person (or the handler) declined a sampling request
# Consent: a question asked outside a call of its own session, of a method its protocol lacks, a form outside MCP's
# restricted form or an address that hides where it goes (declined); refused before anyone is asked.
QUESTION_REFUSED = "mcp_question_refused"
QUESTION_WITHDRAWN = "mcp_question_withdrawn"  # the server withdrew its question (notifications/cancelled)
CANCELLED = "notifications/cancelled"  # either side stops waiting for a request of its own
# What a server sends unasked (notifications, its requests, answers no request awaits), weighed before it is parsed.
UNASKED_TOO_LARGE = "mcp_unasked_too_large"  # one over the bounds: dropped unread (a request answered with an error)
FLOOD_LIMIT = "mcp_flood_limit_exceeded"  # all of them past the rate: the session fails, nothing more is read

# Error codes shared with purra-mcp.
BINDING_INVALID = "mcp_binding_invalid"
BINDING_MISSING = "mcp_binding_missing"
NAME_CONFLICT = "mcp_name_conflict"
CANCELED = "mcp_canceled"  # a write cancelled after it was sent: it may have happened
CATALOG_STALE = "mcp_catalog_stale"
CATALOG_LIMIT = "mcp_catalog_limit_exceeded"
SCHEMA_UNSUPPORTED = "mcp_schema_unsupported"  # also: a raw call's schema the kit cannot check arguments with
INVALID_ARGUMENTS = "mcp_invalid_arguments"
RESULT_INVALID = "mcp_result_invalid"
RESULT_UNSUPPORTED = "mcp_result_unsupported"  # a content block that is not text, which an envelope cannot carry
RESULT_TOO_LARGE = "mcp_result_too_large"
TOOL_ERROR = "mcp_tool_error"
PAGINATION_INVALID = "mcp_pagination_invalid"  # a next cursor that is empty, too long or already followed
CONNECTION_CLOSED = "mcp_connection_closed"
PROTOCOL_ERROR = "mcp_protocol_error"
PROTOCOL_UNSUPPORTED = "mcp_protocol_unsupported"  # a protocol version (or era) the kit cannot speak: named
TIMEOUT = "mcp_timeout"
TRANSPORT_ERROR = "mcp_transport_error"

# Session states (``McpSession.state``).
CONNECTING = "connecting"
READY = "ready"
STALE = "stale"
CLOSED = "closed"
FAILED = "failed"
STATES = (CONNECTING, READY, STALE, CLOSED, FAILED)

# PendingCall states.
PENDING = "pending"
RUNNING = "running"
DONE = "done"
DENIED = "denied"
VOID = "void"
CALL_STATES = (PENDING, RUNNING, DONE, DENIED, VOID)

# What a call did to the server's state, as purra reports it (``Envelope.effect_state``).
COMMITTED = "committed"
NOT_STARTED = "not_started"
UNKNOWN = "unknown"

# Approval policies.
APPROVAL_POLICIES = ("prompt", "auto", "deny")
# The levels of MCP's logging (RFC 5424's), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# Session log event kinds.
EVENT_CONNECT = "connect"
EVENT_INITIALIZE = "initialize"
EVENT_LIST = "list"
EVENT_LIST_CHANGED = "list_changed"
EVENT_BIND = "bind"
EVENT_APPROVAL = "approval"
EVENT_CALL = "call"
EVENT_STDERR = "stderr"
EVENT_ERROR = "error"
EVENT_CANCEL = "cancel"  # a request the kit stopped waiting for, and the late answers it discards
EVENT_SDK = "sdk"  # a record of the MCP SDK's own logging, with its level
EVENT_CLOSE = "close"
EVENT_SETTING = "setting"  # a policy or timeout changed on an open session
EVENT_SERVER_LOG = "server_log"  # a log message the server sent (notifications/message): its level, logger, data
EVENT_TASK = "task"  # a raw call run as a task: created, its end, its cancellation
EVENT_APP = "app"  # a tool's view: read, its domains decided, its requests, its log lines
EVENT_RESOURCE_UPDATED = "resource_updated"  # the server said a resource changed (notifications/resources/updated)
EVENT_ASKED = "asked"  # the server asked the client (sampling, elicitation, roots) and what it was answered
EVENT_DROPPED = "dropped"  # server messages not handed on: a flood past its budget, unknown notices, stray answers

# The lists a server offers besides tools, as their list_changed notices name them (raw exploration).
RESOURCES = "resources"  # resources/list and resources/templates/list (one notice covers both)
PROMPTS = "prompts"

# Transports.
STDIO = "stdio"
HTTP = "http"
MEMORY = "memory"  # an MCP server object in the kernel's own process

# MIME types our JupyterLab extension renders.
CATALOG_MIME = "application/vnd.purra.catalog+json"
ENVELOPE_MIME = "application/vnd.purra.envelope+json"
RAW_RESULT_MIME = "application/vnd.purra.raw-result+json"
APP_MIME = "application/vnd.purra.app+json"  # a tool's own view (MCP Apps), sandboxed by the extension
# A widget output of ours: its model id and its static view (what reads without the widget's kernel). The
# extension draws the static view and mounts the live widget (ipywidgets' own MIME type, kept in the same
# bundle for other frontends) only while the kernel that holds its model runs.
WIDGET_MIME = "application/vnd.purra.widget+json"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
