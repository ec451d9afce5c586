"""This module contains the handles of values held by the shards of a fit: :class:`Ref` (the
caller's side, with a finalizer that drops the value when the handle dies), :class:`Key` (what
a shard receives: no finalizer) and the helpers that find and replace them inside arguments.

A handle names ``(owner, id)``: the shard that holds the value, or :data:`ALL` for a value held
by every shard (scattered to all, or made by a step every shard runs).
"""
from __future__ import annotations

from oocgbdt.core.executor import EVERYWHERE

__all__ = ["ALL", "Key", "Ref", "walk", "find_refs"]

ALL = EVERYWHERE  #: owner of values scattered to, or made by, every shard


class Key:
    """Transport form of a :class:`Ref` (what shards receive): no finalizer attached."""

    __slots__ = ("owner", "id")

    def __init__(self, owner, id):
        self.owner, self.id = owner, id


class Ref:
    """Caller-side handle of a value held by a shard (``owner``) or by all shards (``ALL``)."""

    __slots__ = ("owner", "id", "__weakref__")

    def __init__(self, owner: int, id: int):
        self.owner, self.id = owner, id

    def __reduce__(self):
        return (Key, (self.owner, self.id))

    def __repr__(self):
        return f"Ref(owner={self.owner}, id={self.id})"


def walk(obj, fn):
    """Copy of ``obj`` with every Ref/Key replaced by ``fn(ref)`` (lists and tuples walked)."""
    if isinstance(obj, (Ref, Key)):
        return fn(obj)
    if isinstance(obj, list):
        return [walk(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(walk(o, fn) for o in obj)
    return obj


def find_refs(obj, out, kinds=(Ref,)):
    """Append to ``out`` every handle of the given ``kinds`` inside ``obj`` (lists and tuples
    walked); the caller's side looks for :class:`Ref`, a shard for :class:`Key` too."""
    if isinstance(obj, kinds):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            find_refs(o, out, kinds)
    return out
