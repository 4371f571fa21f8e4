"""The built-in offline demo provider: a scripted model over real HTTP on 127.0.0.1."""

from dashfloat.demo._model import Reply, respond
from dashfloat.demo._server import DEMO_MODEL, Demo, handler, start_demo

__all__ = ["DEMO_MODEL", "Demo", "Reply", "handler", "respond", "start_demo"]
