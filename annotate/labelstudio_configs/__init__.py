"""Label Studio labeling configs, one per unit kind; ``{choices}`` is filled with the kind's scheme labels."""
