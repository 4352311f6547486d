"""accord's command line (`accord ...`) and Streamlit apps."""

from apps.cli import main

__all__ = ["main"]
