"""KINDLING TEST FIXTURE (stand-in, not PyTorch): torch.backends.cudnn of a CPU build."""


def is_available():
    return False


def version():
    # The real CPU build answers None: no cuDNN.
    return None
