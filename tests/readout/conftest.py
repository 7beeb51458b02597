"""Shared inputs of the readout tests."""

QUERY = "how long is the life cycle of a flea"
TEXTS = [
    "The life cycle of a flea can last anywhere from 20 days to an entire year.",
    "Fleas lay eggs on the host; the eggs fall off into the environment.",
    "An unrelated passage about the history of the Roman empire and its roads.",
    "Cats and dogs are the most common hosts of the cat flea.",
    "A flea can live up to a year, but its lifespan depends on its living conditions.",
]
