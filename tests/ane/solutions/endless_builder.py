"""A builder that never returns."""


def build(weights, input_shapes):
    while True:
        pass
