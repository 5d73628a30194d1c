"""Python and PyTorch projects: dependency manifests and Python code, judged on the
Python routes (ROCm builds of PyTorch, DirectML), with the CUDA inside them (extension
sources, CuPy kernel strings, numba.cuda kernels) fed to the CUDA pipeline."""
