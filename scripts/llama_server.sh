#!/usr/bin/env bash
# Placeholder: filled in by the llama_server work.
exit 0
