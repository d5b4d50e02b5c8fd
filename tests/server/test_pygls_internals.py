"""Every private pygls name difill relies on still exists, with the shape difill assumes.

difill overrides and reads pygls internals (server/transport/protocol.py, server/server.py,
server/transport/tcp.py, server/features/edits/code_actions.py).  pyproject pins pygls to one
minor version; this test is what a pygls upgrade must pass first, so a renamed internal fails here,
in one place, rather than silently (an override pygls no longer calls changes nothing visibly).
"""

from __future__ import annotations

import inspect
import threading

import pygls.io_
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.server import JsonRPCServer

from difill.server.server import DifillServer, create_server
from difill.server.transport.protocol import DifillProtocol

# Methods of pygls' protocol that DifillProtocol overrides or calls: name -> the parameters it
# passes or accepts (after self).
PROTOCOL_METHODS = {
    "_handle_request": ["msg_id", "method_name", "params"],
    "_handle_notification": ["method_name", "params"],
    "_handle_cancel_notification": ["msg_id"],
    "_execute_handler": ["msg_id", "handler", "callback", "args", "kwargs"],
    "_send_handler_result": ["future", "msg_id"],
    "_send_response": None,
    "_send_data": ["data"],
    "structure_message": ["data"],
    "handle_message": ["message"],
    "set_writer": None,
}
# Attributes of a protocol instance difill reads or writes.
PROTOCOL_ATTRIBUTES = ("_server", "_shutdown", "_request_futures", "_converter", "fm", "msg_id")
# Methods and attributes of pygls' server difill overrides or reads.
SERVER_METHODS = ("_start_io_async", "report_server_error", "shutdown")
SERVER_ATTRIBUTES = ("_stop_event", "thread_pool", "protocol")


def _parameters(function) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


def test_the_protocol_methods_difill_overrides_exist_with_the_parameters_it_assumes():
    for name, expected in PROTOCOL_METHODS.items():
        assert hasattr(JsonRPCProtocol, name), f"pygls' protocol no longer has {name}"
        if expected is not None:
            assert _parameters(getattr(JsonRPCProtocol, name)) == expected, name
    # DifillProtocol recognises a request's callback by this partial (see its _execute_handler).
    source = inspect.getsource(JsonRPCProtocol._handle_request)
    assert "partial(self._send_handler_result, msg_id=msg_id)" in source
    assert issubclass(DifillProtocol, LanguageServerProtocol)
    assert callable(lsp_method)


def test_the_protocol_and_server_attributes_difill_uses_exist_on_a_live_server():
    server = create_server()
    protocol = server.protocol
    assert isinstance(protocol, DifillProtocol)
    for name in PROTOCOL_ATTRIBUTES:
        assert hasattr(protocol, name), f"pygls' protocol no longer sets {name}"
    assert protocol._server is server
    assert protocol._shutdown is False
    assert isinstance(protocol._request_futures, dict)
    assert hasattr(protocol._converter, "unstructure")  # code actions unstructure ranges with it
    assert isinstance(protocol.fm.features, dict) and isinstance(protocol.fm.builtin_features, dict)
    for name in SERVER_METHODS:
        assert hasattr(JsonRPCServer, name), f"pygls' server no longer has {name}"
    assert _parameters(JsonRPCServer._start_io_async) == ["stdin", "stdout"]
    for name in SERVER_ATTRIBUTES:
        assert hasattr(server, name), f"pygls' server no longer has {name}"
    assert isinstance(server, DifillServer)


def test_shutdown_sets_the_stop_event_difill_installs():
    # server/transport/tcp.py and DifillServer._start_io_async install their own stop event and
    # rely on pygls' shutdown() setting it to end the read loop.
    server = create_server()
    server._stop_event = stop = threading.Event()
    server.shutdown()
    assert stop.is_set()


def test_the_io_helpers_difill_runs_its_loops_with_exist():
    assert _parameters(pygls.io_.run_async) == ["stop_event", "reader", "protocol", "logger", "error_handler"]
    assert callable(pygls.io_.StdoutWriter)
