"""The demo's recalibration: a new threshold every so many applied labels, through the
calibration job."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from filterd.evaluation.calibration import CalibrationError
from filterd.evaluation.guardrails import GuardrailError
from filterd.jobs.calibrate import calibrate_configured
from filterd.service.config import Config
from filterd.service.decide import NotReady
from filterd.store.errors import StoreError, UnknownModel
from filterd.store.handle import ModelStore, Store

CREATED_BY = "filterd demo"


def next_attempt(applied: int, every: int, have_tau: bool) -> int:
    """The count of applied labels at which to calibrate next: the next multiple of `every`, or
    of `every // 10` while no τ has been written (the daemon's own schedule tries every
    minute until one is: a demo's stream lasts minutes).

    >>> next_attempt(1000, 1000, have_tau=True), next_attempt(1000, 1000, have_tau=False)
    (2000, 1100)
    >>> next_attempt(1234, 1000, have_tau=False), next_attempt(5, 5, have_tau=False)
    (1300, 6)
    """
    step = every if have_tau else max(1, every // 10)
    return (applied // step + 1) * step


@dataclass(frozen=True)
class ThresholdInfo:
    """The threshold version the demo's last successful calibration wrote."""

    version: int
    tau: float
    auc: float
    n_pos: int
    n_neg: int
    recall: float
    specificity: float


class Calibrator:
    """Runs `calibrate_configured` in a thread every `every` feedback records the learner applied
    (every `every // 10` from the first attempt until a τ is written), and once more on request
    at the end. Refusals (too small a window, model not ready) are
    kept as `note`; they are the normal state early in the stream."""

    def __init__(
        self,
        config: Config,
        every: int,
        applied: Callable[[], int],
        on_event: Callable[[str], None],
    ) -> None:
        self.config, self.every, self.applied, self.on_event = config, every, applied, on_event
        self.next_at = every
        self.last_at = 0
        self.threshold: ThresholdInfo | None = None
        self.note = f"first calibration after {every:,} feedback records"
        self.attempts = self.written = 0
        self._kind = ""  # the kind of the last refusal ("waiting for labels"...), "" after success
        self._final = threading.Event()
        self._final_done = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="filterd-demo-calibrator", daemon=True
        )

    def start(self) -> Calibrator:
        self._thread.start()
        return self

    def _run(self) -> None:
        self._store = Store.open(self.config.database.url)
        self._model: ModelStore | None = None  # found once the daemon has created it
        try:
            while not self._stop.wait(0.2):
                applied = self.applied()
                if applied >= self.next_at:
                    self._attempt(applied)
                    self.next_at = next_attempt(applied, self.every, self.threshold is not None)
                elif self._final.is_set() and not self._final_done.is_set():
                    if applied > self.last_at:
                        self._attempt(applied)
                    self._final_done.set()
        finally:
            self._store.close()
            self._final_done.set()

    def _attempt(self, applied: int) -> None:
        self.attempts += 1
        self.last_at = applied
        try:
            if self._model is None:
                self._model = self._store.model(self.config.model.name)
            report = calibrate_configured(self._model, self.config, CREATED_BY)
        except GuardrailError as error:
            waiting = any(r.startswith("too_few") or r == "unreachable" for r in error.reasons)
            self._refused("waiting for labels" if waiting else "not recalibrated", _short(error))
            return
        except CalibrationError as error:
            self._refused("waiting for labels", _short(error))
            return
        except NotReady as error:
            self._refused("waiting for the model", str(error))
            return
        except (UnknownModel, StoreError) as error:
            self._refused("store not ready", str(error).splitlines()[0])
            return
        except Exception as error:  # noqa: BLE001 - a failed calibration must not end the demo
            self._refused("calibration failed", repr(error))
            return
        self.written += 1
        assert report.version is not None  # not a dry run: the version was written
        self.threshold = ThresholdInfo(
            report.version,
            report.tau,
            report.auc,
            report.n_pos,
            report.n_neg,
            report.recall,
            report.specificity,
        )
        self.note = self._kind = ""
        others = "ham" if report.target_class == "spam" else f"not {report.target_class}"
        e = report.expected_recall
        self.on_event(
            f"threshold v{report.version}: τ = {report.tau:.4g} ({report.source} window "
            f"{report.n_pos:,} {report.target_class} / {report.n_neg:,} {others}, AUC "
            f"{report.auc:.4f}, expected recall {e.mean:.1%} [{e.low:.1%}–{e.high:.1%}], "
            f"{others} kept {report.specificity:.1%}), after {applied:,} labels"
        )

    def _refused(self, kind: str, why: str) -> None:
        # The reason is refreshed on screen every time, but printed as an event only when it
        # changes kind: "too few positives: 41", "…: 52", … would scroll the screen away.
        if kind != self._kind:
            self.on_event(f"{kind}: {why}")
        self.note, self._kind = f"{kind}: {why}", kind

    def finish(self, timeout: float) -> None:
        """Try a last calibration on everything applied so far, and wait for it."""
        self._final.set()
        self._final_done.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(60.0)  # a calibration in progress finishes its transaction


def _short(error: Exception) -> str:
    """A guardrail's message without what the screen does not need (its class, the CLI hint)."""
    text = str(error).removesuffix(" (--force to override)")
    prefix, sep, rest = text.partition(": ")
    return rest if sep and prefix.startswith("refused for ") else text
