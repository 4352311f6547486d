"""One module per `accord` subcommand (module name = command name, '_' for '-')."""


def resamples(text: str) -> int:
    """argparse type of a resample or permutation count: an integer in the bounds ``agreement.estimate`` sets
    (0 where an option documents it as "no bootstrap")."""
    import argparse

    from samples import MAX_RESAMPLES, MIN_RESAMPLES

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer") from None
    if value != 0 and not MIN_RESAMPLES <= value <= MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"{value}: expected {MIN_RESAMPLES} to {MAX_RESAMPLES}")
    return value
