"""The numpy array types of the pure core, by element type (any shape)."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

Int64Array: TypeAlias = npt.NDArray[np.int64]
IntArray: TypeAlias = npt.NDArray[np.signedinteger]  # int64, or int32 where values fit
UInt64Array: TypeAlias = npt.NDArray[np.uint64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
