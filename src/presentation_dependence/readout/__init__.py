"""The expected-grade readout: prompt construction (``prompt``) and a transformers backend.

See ``docs/SCORING.md`` for the specification.
"""

from presentation_dependence.readout.prompt import (
    PATHC_GRADE_V1_INSTRUCTION,
    TEMPLATES,
    BuiltPrompt,
    GradeLabelTokenizationError,
    GradeTemplate,
    PromptBuilder,
    PromptTooLongError,
    get_template,
)

__all__ = [
    "PATHC_GRADE_V1_INSTRUCTION",
    "TEMPLATES",
    "BuiltPrompt",
    "GradeLabelTokenizationError",
    "GradeTemplate",
    "PromptBuilder",
    "PromptTooLongError",
    "get_template",
]
