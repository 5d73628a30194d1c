"""Front ends that turn source bytes into syntax trees.

tree-sitter-cuda is the default: fast, needs no headers, and recovers from code
it cannot parse (macro-heavy sources) so the rest of the file is still read.
"""

from portcheck.parse.text import count_lines, decode_source
from portcheck.parse.treesitter import CUDA_LANGUAGE, parse_cuda

__all__ = ["CUDA_LANGUAGE", "count_lines", "decode_source", "parse_cuda"]
