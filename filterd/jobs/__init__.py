"""Jobs that read the store, compute with the pure layers and write the store back: the
calibration job (`calibrate`), which the learner's monitor, `filterd calibrate`, the demo and
the workbench run. `__all__` names the module rather than re-exporting its names, so that each
name has one home, `filterd.jobs.calibrate`."""

__all__ = ["calibrate"]
