"""SACK-based loss recovery, RFC 6675 (over RFC 2018 SACK blocks).

Loss recovery starts on the third duplicate ACK or when IsLost(snd_una) holds; from then
on the strategy transmits while cwnd - pipe >= 1 SMSS, choosing each segment with
NextSeg(): first a hole deemed lost (rule 1), then new data (rule 2), then any un-SACKed
hole above HighRxt (rule 3). Recovery ends when the cumulative ACK reaches RecoveryPoint
(the `recover` variable). After a timeout the scoreboard is kept and go-back-N skips
SACKed data (RFC 6675 5.1). The scoreboard (`scoreboard.py`) answers pipe, IsLost and
NextSeg without walking the window.

Rule 4 of NextSeg (the optional "rescue" retransmission) is left out, as in ns-3: when the
receive window blocks new data it resends data that is merely in flight, and a lost tail
segment is then recovered by the retransmission timer.

With `tcp.recovery: prr` (the default) cwnd in recovery is not ssthresh but pipe + PRR's
sndcnt on every ACK (`prr.py`), as Linux runs RFC 6675 loss detection under PRR; NextSeg
still chooses what is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from engine.packet import Packet
from engine.tcp.recovery.base import AckUse, NoRecovery, Sender
from engine.tcp.recovery.prr import Prr
from engine.tcp.recovery.scoreboard import Scoreboard
from engine.tcp.state import DUPACK_THRESHOLD, Phase

if TYPE_CHECKING:
    from engine.scenario import TcpSpec
    from engine.tcp.state import TcpState


class SackRecovery(NoRecovery):
    name: ClassVar[str] = "sack"
    scoreboard = True
    paces_recovery = True
    limited_transmit = True  # RFC 6675 5 step (3): new data on the first two dupacks

    def __init__(self, spec: TcpSpec) -> None:
        super().__init__(spec)
        self.board = Scoreboard(spec.mss)
        self.prr = Prr(spec.mss, spec.prr_bound == "ssrb") if spec.recovery == "prr" else None
        self.delivered = 0  # RFC 6937 DeliveredData of the ACK being processed
        #: The first retransmission, waiting for pacing (`tcp.pacing`, BBR); -1: none.
        self.head_pending = -1

    def on_sack(self, snd: Sender, pkt: Packet) -> None:
        old_una = snd.st.snd_una
        una = pkt.ack if pkt.ack > old_una else old_una
        sacked = self.board.sacked.total
        self.board.update(una, pkt.sack, snd.limit)
        self.delivered = una - old_una + self.board.sacked.total - sacked

    def skip_sacked(self, seq: int) -> int:
        return self.board.skip_sacked(seq)

    def on_dupack(self, snd: Sender) -> None:
        st = snd.st
        if st.phase == Phase.RECOVERY:
            if self.prr is not None:
                self._prr_window(snd, safe_ack=False)
            return
        if st.snd_una < st.recover:
            return
        if snd.dupacks >= DUPACK_THRESHOLD or self.board.is_lost(st.snd_una):
            self._enter_recovery(snd)
            self._first_retransmission(snd, st.snd_una)

    def _enter_recovery(self, snd: Sender) -> None:
        """RFC 6675 5 step 4: RecoveryPoint = HighData, HighRxt = HighACK; ssthresh =
        cwnd = FlightSize / 2 (or PRR's window from here on)."""
        st = snd.st
        recover_fs = st.flight_size
        snd.begin_fast_retransmit()
        st.cwnd = st.ssthresh
        snd.set_phase(Phase.RECOVERY)
        self.board.high_rxt = st.snd_una
        if self.prr is not None:
            self.prr.start(recover_fs, st.ssthresh)
            self._prr_window(snd, safe_ack=False)

    def _first_retransmission(self, snd: Sender, seq: int) -> None:
        """RFC 6675 5 step 4.3: the first segment deemed lost leaves at once whatever the
        window, or, paced, first when pacing allows; the timer restarts with it."""
        self.head_pending = -1 if snd.may_send() else seq
        if self.head_pending < 0:
            self._retransmit(snd, seq)
        snd.restart_rto()

    def pipe(self, st: TcpState) -> int:
        """RFC 6675 SetPipe: the bytes believed in flight."""
        return self.board.pipe(st.snd_una, st.snd_max)

    def on_new_ack(self, snd: Sender, acked: int) -> AckUse:
        st = snd.st
        if st.phase != Phase.RECOVERY:
            return AckUse.GROW
        if st.snd_una >= st.recover:
            snd.exit_recovery()
        elif self.prr is not None:
            self._prr_window(snd, safe_ack=True)
        return AckUse.RECOVERY

    def _prr_window(self, snd: Sender, safe_ack: bool) -> None:
        """RFC 6937: cwnd = pipe + sndcnt for the ACK just processed. `safe_ack` is an ACK
        that advances snd_una (Linux also requires that it marks no new loss; the
        scoreboard does not track that per ACK, so this bound is Linux's or a segment
        more on such an ACK)."""
        st = snd.st
        prr = self.prr
        assert prr is not None  # PRR's window in PRR recovery only
        pipe = self.pipe(st)
        st.cwnd = pipe + prr.sndcnt(self.delivered, pipe, safe_ack)

    def transmit(self, snd: Sender) -> bool:
        """RFC 6675 5 step (C): while cwnd - pipe >= 1 SMSS, send what NextSeg() offers."""
        st = snd.st
        mss = st.mss
        pipe = self.pipe(st)
        sent = False
        while st.cwnd - pipe >= mss and snd.may_send():
            head = self.head_pending
            if head >= 0:
                self.head_pending = -1
                if st.snd_una <= head < st.snd_max and self.board.skip_sacked(head) == head:
                    self._retransmit(snd, head)
                    pipe += min(mss, st.snd_max - head)
                    sent = True
                    continue
            seg = self.next_seg(snd)
            if seg is None:
                break
            seq, length, new = seg
            if new:
                snd.send_new_data(length)
                if self.prr is not None:
                    self.prr.out += length
            else:
                self._retransmit(snd, seq)
            pipe += length
            sent = True
        return sent

    def _retransmit(self, snd: Sender, seq: int) -> None:
        length = min(snd.st.mss, snd.st.snd_max - seq)
        snd.retransmit(seq, length)
        self.board.retransmitted(seq, length)
        if self.prr is not None:
            self.prr.out += length

    def next_seg(self, snd: Sender) -> tuple[int, int, bool] | None:
        """RFC 6675 NextSeg(): (seq, length, is_new_data) or None."""
        st = snd.st
        hole = self.board.first_hole(st.snd_una)
        if hole is not None and self.board.is_lost(hole):  # rule 1
            return hole, min(st.mss, st.snd_max - hole), False
        length = snd.new_data_length()  # rule 2
        if length:
            return st.snd_max, length, True
        if hole is not None:  # rule 3
            return hole, min(st.mss, st.snd_max - hole), False
        return None
