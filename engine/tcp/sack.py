"""SACK-based loss recovery, RFC 6675 (over RFC 2018 SACK blocks).

The scoreboard is the set of SACKed byte ranges above snd_una. Loss recovery starts on the
third duplicate ACK or when IsLost(snd_una) holds; from then on the sender transmits while
cwnd - pipe >= 1 SMSS, choosing each segment with NextSeg(): first a hole deemed lost
(rule 1), then new data (rule 2), then any un-SACKed hole above HighRxt (rule 3).
Recovery ends when the cumulative ACK reaches RecoveryPoint (the `recover` variable).
After a timeout the scoreboard is kept and go-back-N skips SACKed data (RFC 6675 5.1).

Rule 4 of NextSeg (the optional "rescue" retransmission) is left out, as in ns-3: when the
receive window blocks new data it resends data that is merely in flight, and a lost tail
segment is then recovered by the retransmission timer.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

from engine.tcp.recovery import DUPACK_THRESHOLD, NoRecovery
from engine.tcp.state import Phase

if TYPE_CHECKING:
    from engine.tcp.sender import TcpSender


class SackRecovery(NoRecovery):
    name = "sack"
    scoreboard = True
    limited_transmit = True  # RFC 6675 5 step (3): new data on the first two dupacks

    def __init__(self) -> None:
        self.blocks: list[list[int]] = []  # sorted, merged SACKed [start, end) above snd_una
        self.high_rxt = 0  # RFC 6675 HighRxt: highest byte retransmitted in this recovery

    # --- the scoreboard ------------------------------------------------------------------

    def on_sack(self, snd: TcpSender, pkt) -> None:
        una = max(pkt.ack, snd.st.snd_una)
        blocks = self.blocks
        if pkt.sack:
            for start, end in pkt.sack:
                if end > una:
                    self._add(max(start, una), end)
        # Forget what the cumulative ACK now covers.
        while blocks and blocks[0][1] <= una:
            blocks.pop(0)
        if blocks and blocks[0][0] < una:
            blocks[0][0] = una

    def _add(self, start: int, end: int) -> None:
        blocks = self.blocks
        i = bisect_right(blocks, [start, end])
        blocks.insert(i, [start, end])
        merged: list[list[int]] = []
        for b in blocks:
            if merged and b[0] <= merged[-1][1]:
                if b[1] > merged[-1][1]:
                    merged[-1][1] = b[1]
            else:
                merged.append(b)
        self.blocks = merged

    def is_sacked(self, seq: int) -> bool:
        for start, end in self.blocks:
            if start <= seq < end:
                return True
            if start > seq:
                break
        return False

    def skip_sacked(self, seq: int) -> int:
        for start, end in self.blocks:
            if start <= seq < end:
                return end
            if start > seq:
                break
        return seq

    def sacked_above(self, seq: int) -> int:
        return sum(end - max(start, seq) for start, end in self.blocks if end > seq)

    def is_lost(self, seq: int, mss: int) -> bool:
        """RFC 6675 IsLost: DupThresh discontiguous SACKed ranges, or more than
        (DupThresh - 1) * SMSS SACKed bytes, above `seq`."""
        above = [b for b in self.blocks if b[1] > seq]
        if len(above) >= DUPACK_THRESHOLD:
            return True
        return self.sacked_above(seq) > (DUPACK_THRESHOLD - 1) * mss

    def pipe(self, snd: TcpSender) -> int:
        """RFC 6675 SetPipe: bytes believed to be in the network."""
        st = snd.st
        mss = st.mss
        pipe = 0
        seq = st.snd_una
        while seq < st.snd_max:
            end = min(seq + mss, st.snd_max)
            nxt = self.skip_sacked(seq)
            if nxt != seq:
                seq = nxt
                continue
            length = end - seq
            if not self.is_lost(seq, mss):
                pipe += length
            if seq < self.high_rxt:
                pipe += length
            seq = end
        return pipe

    # --- recovery ------------------------------------------------------------------------

    def on_dupack(self, snd: TcpSender) -> None:
        st = snd.st
        if st.phase == Phase.RECOVERY or st.snd_una < st.recover:
            return
        if snd.dupacks >= DUPACK_THRESHOLD or self.is_lost(st.snd_una, st.mss):
            # RFC 6675 5 step 4: RecoveryPoint = HighData; ssthresh = cwnd = FlightSize/2.
            snd.congestion_event()
            st.cwnd = st.ssthresh
            snd.fast_retransmits += 1
            snd.set_phase(Phase.RECOVERY)
            self.high_rxt = st.snd_una
            self._retransmit(snd, st.snd_una)  # step 4.3: the first segment, at once
            snd.restart_rto()

    def on_new_ack(self, snd: TcpSender, acked: int) -> bool:
        st = snd.st
        if st.phase != Phase.RECOVERY:
            return False
        if st.snd_una >= st.recover:
            snd.exit_recovery()
        return True

    def transmit(self, snd: TcpSender) -> bool:
        st = snd.st
        if st.phase != Phase.RECOVERY:
            return False
        mss = st.mss
        pipe = self.pipe(snd)
        sent = False
        while st.cwnd - pipe >= mss:
            seg = self._next_seg(snd)
            if seg is None:
                break
            seq, length, new = seg
            if new:
                snd._send_data(seq, length)
                st.snd_nxt = st.snd_max = seq + length
            else:
                self._retransmit(snd, seq)
            pipe += length
            sent = True
        if sent and snd.probe is not None:
            snd.probe.on_send(snd)
        return True

    def _retransmit(self, snd: TcpSender, seq: int) -> None:
        st = snd.st
        length = min(st.mss, st.snd_max - seq)
        snd._send_data(seq, length)
        if seq + length > self.high_rxt:
            self.high_rxt = seq + length

    def _next_seg(self, snd: TcpSender):
        """RFC 6675 NextSeg(): (seq, length, is_new_data) or None."""
        st = snd.st
        mss = st.mss
        highest_sacked = self.blocks[-1][1] if self.blocks else st.snd_una
        seq = max(st.snd_una, self.high_rxt)
        rescue = None
        while seq < highest_sacked:
            nxt = self.skip_sacked(seq)
            if nxt != seq:
                seq = nxt
                continue
            if self.is_lost(seq, mss):  # rule 1
                return seq, min(mss, st.snd_max - seq), False
            if rescue is None:
                rescue = seq
            seq += mss
        # Rule 2: new data, if the application has it and the receive window allows.
        limit = snd.limit
        window = min(snd.rwnd, snd.snd_buf)
        if st.snd_max < limit:
            length = int(min(mss, limit - st.snd_max))
            if st.snd_max + length <= st.snd_una + window:
                return st.snd_max, length, True
        if rescue is not None:  # rule 3
            return rescue, min(mss, st.snd_max - rescue), False
        return None
