"""Parsing JSON that is still arriving (tool-call arguments stream in pieces): the
contract's :func:`pi_hookspecs.streaming.parse_streaming_json`."""

from pi_hookspecs.streaming import parse_streaming_json

__all__ = ["parse_streaming_json"]
