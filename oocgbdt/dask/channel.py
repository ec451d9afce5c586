"""This module contains :class:`PeerChannel`: direct connections between the shards of one fit,
for the values they push to each other in every boosting pass (partial histograms, split
records).

Why: a push through ``distributed`` (an actor call) is serialized and sent by the worker's event
loop thread, which must take the GIL from the shard's thread that made the call, and is
received by the other worker's event loop, which must hand the values to that shard's thread.
On a LocalCluster of 2 processes the values arrived about 1.4 ms after the push began, and the
push held the pushing thread for about 1 ms (a trace, medians over about 250 passes). Over a connection of its own, the shard's
thread sends the values itself (the socket calls release the GIL) and a thread of the receiving
shard waits on the socket and stores them: measured on 1M x 100, 2 workers, alternating runs,
0.19-0.21 -> 0.15-0.18 s per tree with EMA-FS and 0.31-0.34 -> 0.28-0.29 at the defaults.

The connections are :mod:`multiprocessing.connection` listeners and clients (framed messages,
with multiprocessing's HMAC challenge, both ways, on a random key made per fit by the caller
and sent to the shards with their set-up calls, since the values are pickled: a connection
without it can neither send nor receive, and nothing is unpickled before the challenge). Each incoming connection's challenge runs on that
connection's own thread, and the connections are made at set-up, all at once, within a
timeout: a connection that never answers holds up nothing else. They are used only between
workers whose ``distributed`` address is plain ``tcp://`` with an IPv4 address or a host name
(not TLS, UCX, in-process or IPv6); otherwise, or when a connection cannot be made, the shards
push through ``distributed`` as before. Values are sent as a pickle with out-of-band
buffers (protocol 5): arrays travel as their own bytes, received into writable buffers.
"""
from __future__ import annotations

import logging
import os
import pickle
import socket
import threading
import time
from multiprocessing.connection import Client, Listener, answer_challenge, deliver_challenge

__all__ = ["PeerChannel", "channel_host", "direct_channel_enabled", "CONFIG_KEY"]

logger = logging.getLogger(__name__)

#: Seconds to wait for a connection to another shard's channel, before training starts.
CONNECT_SECONDS = 10.0
#: Pending connections the listener queues: every other shard dials at once at set-up
#: (multiprocessing's default of 1 lost a quarter of 99 simultaneous dials, found in review).
LISTEN_BACKLOG = socket.SOMAXCONN
#: Messages sent and received by this process's channels (diagnostics; tests read them).
COUNTS = {"sent": 0, "received": 0}


#: Dask configuration key that turns the channel off (``dask.config.set({CONFIG_KEY: False})``,
#: or ``DASK_OOCGBDT__DIRECT_CHANNEL=False`` in the environment, read by Dask's configuration):
#: every push then goes through ``distributed``. On by default.
CONFIG_KEY = "oocgbdt.direct-channel"


def direct_channel_enabled() -> bool:
    """Whether fits open direct connections between their shards (:data:`CONFIG_KEY`)."""
    import dask
    return bool(dask.config.get(CONFIG_KEY, True))


def channel_host(worker_address: str):
    """The host a channel of the worker at ``worker_address`` listens on: the address's host for
    a plain ``tcp://`` IPv4 or host-name address, else None (no channel: TLS, UCX and
    in-process comms keep their ``distributed`` transport; so do IPv6 addresses, which
    ``multiprocessing.connection``'s listener does not take)."""
    if not worker_address.startswith("tcp://"):
        return None
    host = worker_address[len("tcp://"):].rsplit(":", 1)[0]
    if host.startswith("["):  # IPv6 ("tcp://[::1]:8786")
        return None
    return host


def _shutdown(conn) -> None:
    """Shut a connection down, both ways, without closing its descriptor: a thread blocked
    reading it wakes (end of file) and closes it itself."""
    try:
        fd = conn.fileno()
    except (OSError, ValueError):  # closed already
        return
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


class PeerChannel:
    """One shard's end of the direct connections of a fit: a listener that the other shards
    connect to, a thread per incoming connection, and a connection to each other shard
    (:meth:`connect`) that this shard's thread sends on (:meth:`send`).

    Parameters
    ----------
    host : str
        The host to listen on (see :func:`channel_host`).
    authkey : bytes
        The fit's key: a connection whose peer does not know it is refused.
    on_values : callable
        ``on_values(ids, values)``, called on a receiving thread for each message.
    on_error : callable
        ``on_error(exception)``, called on a receiving thread if a message cannot be read or
        stored (not when the other end closes: a lost worker is found by the caller's
        liveness checks).

    Raises
    ------
    OSError
        If the listener cannot be made (the caller then pushes through ``distributed``).
    """

    def __init__(self, host: str, authkey: bytes, on_values, on_error):
        self._authkey = authkey
        self._on_values = on_values
        self._on_error = on_error
        # No authkey here: each connection's challenge runs on its own thread (_receive), so a
        # connection that never answers holds up only that thread, not the other shards'.
        self._listener = Listener((host, 0), backlog=LISTEN_BACKLOG)
        self.address = self._listener.address  #: (host, port) for the other shards
        self._out = {}       # shard index -> Connection (or None: use distributed)
        self._incoming = set()  # Connections accepted and not yet closed
        self._lock = threading.Lock()
        self._closed = False
        self._accepting = threading.Thread(target=self._accept, daemon=True,
                                           name="oocgbdt-channel-accept")
        self._accepting.start()

    def connect(self, addresses, timeout: float = CONNECT_SECONDS) -> None:
        """Connect to the other shards' channels, by shard index (None: this shard itself, or
        a shard without a channel), all at once. Made here, before training, so that a peer
        that cannot be reached, or does not complete the key's challenge, within ``timeout``
        seconds (a firewall) is known at once: its values go through ``distributed``."""
        errors = {}

        def dial(dest, address):
            try:
                conn = Client(address, authkey=self._authkey)
            except Exception as e:
                errors[dest] = e
                return
            with self._lock:
                late = dest in self._out or self._closed  # given up on, or closed meanwhile
                if not late:
                    self._out[dest] = conn
            if late:
                conn.close()

        dials = [threading.Thread(target=dial, args=(dest, tuple(address)), daemon=True,
                                  name="oocgbdt-channel-connect")
                 for dest, address in enumerate(addresses) if address is not None]
        for t in dials:
            t.start()
        deadline = time.monotonic() + timeout
        for t in dials:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            for dest, address in enumerate(addresses):
                if address is not None and dest not in self._out:
                    self._out[dest] = None
                    logger.info("oocgbdt: no direct connection to shard %d at %s (%r); its "
                                "values go through distributed", dest, tuple(address),
                                errors.get(dest, f"no answer within {timeout} s"))

    # ---- receiving --------------------------------------------------------------------------

    def _accept(self):
        while True:
            try:
                conn = self._listener.accept()
            except Exception:
                if self._closed:
                    return
                time.sleep(0.05)  # a persistent error (out of descriptors): do not spin
                continue
            if self._closed:
                conn.close()
                return
            with self._lock:
                self._incoming.add(conn)
            threading.Thread(target=self._receive, args=(conn,), daemon=True,
                             name="oocgbdt-channel-receive").start()

    def _receive(self, conn):
        # A connection that has not passed the challenge within CONNECT_SECONDS is shut down,
        # so a silent one holds its thread no longer than that.
        watchdog = threading.Timer(CONNECT_SECONDS, self._shutdown_incoming, args=(conn,))
        watchdog.daemon = True
        watchdog.start()
        try:
            # multiprocessing's own HMAC challenge, both ways (what Listener(authkey=...) runs
            # in accept): a peer without the fit's key gets nothing and can send nothing.
            deliver_challenge(conn, self._authkey)
            answer_challenge(conn, self._authkey)
            watchdog.cancel()
            while True:
                try:
                    sizes, payload = conn.recv()  # the pickle, and its buffers' sizes
                    buffers = []
                    for n in sizes:
                        buf = bytearray(n)
                        if n:
                            conn.recv_bytes_into(buf)
                        else:
                            conn.recv_bytes()
                        buffers.append(buf)
                except (EOFError, OSError):
                    return  # the sender closed (end of the fit) or is gone, or we closed
                if self._closed:
                    return  # a late message for a closed shard: dropped
                try:
                    ids, values = pickle.loads(payload, buffers=buffers)
                    COUNTS["received"] += 1
                    self._on_values(ids, values)
                except Exception as e:
                    self._on_error(e)
                    return
        except Exception:
            return  # the challenge failed (a wrong key, or a connection that never answered)
        finally:
            watchdog.cancel()
            with self._lock:  # not while another thread shuts it down (see _shutdown_incoming)
                self._incoming.discard(conn)
                conn.close()

    def _shutdown_incoming(self, conn) -> None:
        """Shut down an incoming connection that its thread has not closed yet (under the lock
        its thread closes it with, so its descriptor cannot have gone to another file)."""
        with self._lock:
            if conn in self._incoming:
                _shutdown(conn)

    # ---- sending ----------------------------------------------------------------------------

    def send(self, dest: int, ids, values) -> bool:
        """Send ``values`` under ``ids`` to shard ``dest``; False if there is no connection to
        it (the caller then pushes through ``distributed``). Raises OSError if the connection
        breaks (the other shard's worker is gone)."""
        with self._lock:
            conn = self._out.get(dest)
        if conn is None:
            return False
        buffers = []
        payload = pickle.dumps((list(ids), list(values)), protocol=5,
                               buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
        conn.send(([r.nbytes for r in raws], payload))
        for r in raws:
            conn.send_bytes(r)
        COUNTS["sent"] += 1
        return True

    def close(self) -> None:
        """Close the outgoing connections, stop listening, and end the receiving threads (each
        incoming connection is shut down, which wakes its thread, and the thread closes it:
        closing it here, under a thread blocked reading it, could hand the descriptor to
        another file). Messages still arriving are dropped."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            out, self._out = list(self._out.values()), {}
            for conn in self._incoming:  # their threads wake, see _closed and close them
                _shutdown(conn)
        for conn in out:
            if conn is not None:
                conn.close()
        try:  # wake the accepting thread, which then sees _closed and returns
            socket.create_connection(self.address, timeout=CONNECT_SECONDS).close()
        except OSError:
            pass
        self._listener.close()
