"""Jobs that read the store, compute with the pure layers and write the store back: calibration."""
