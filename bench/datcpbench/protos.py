"""Python classes of proto/src/main/proto/datcp/v1/datcp.proto, generated with grpcio-tools
into a per-process temporary directory on first use (nothing generated is committed, so the
replay always speaks the proto the agent and the scheduler were built from)."""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile

from .kernel import REPO

PROTO_ROOT = os.path.join(REPO, "proto", "src", "main", "proto")
_mods = None


def load():
    """Returns (datcp_pb2, datcp_pb2_grpc)."""
    global _mods
    if _mods is None:
        # the bench forks (subprocess) while gRPC threads run; gRPC's fork handlers are
        # for children that use gRPC, which these never do
        os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
        try:
            from grpc_tools import protoc
        except ImportError as e:
            raise SystemExit("the trace replay needs grpcio and grpcio-tools "
                             "(pip install -r bench/requirements.txt)") from e
        out = tempfile.mkdtemp(prefix="datcp-proto-")
        try:
            inc = os.path.join(os.path.dirname(protoc.__file__), "_proto")
            rc = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{inc}", f"--python_out={out}",
                              f"--grpc_python_out={out}", "datcp/v1/datcp.proto"])
            if rc != 0:
                raise SystemExit(f"protoc failed on {PROTO_ROOT}/datcp/v1/datcp.proto")
            sys.path.insert(0, out)
            try:
                _mods = (importlib.import_module("datcp.v1.datcp_pb2"),
                         importlib.import_module("datcp.v1.datcp_pb2_grpc"))
            finally:
                sys.path.remove(out)
        finally:
            # the modules are imported: the files are no longer needed
            shutil.rmtree(out, ignore_errors=True)
    return _mods
