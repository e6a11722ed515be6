"""The core: the LIE reward (``reward``), n-gram states (``ngrams``), evaluation metrics (``metrics``)
and the project's error type (``errors``). Plain Python and NumPy; imports nothing else of ``lie``."""
