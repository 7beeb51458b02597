"""Training order-consistent students of the expected-grade readout (docs/TRAINING.md).

Modules: ``config`` (strict training configs, the four variants), ``silver`` (teacher labels
under T presentations), ``collate`` (views -> readout prompts, padded, slot masks), ``loss``
(masked squared error and the OC consistency term), ``model`` (base + LoRA student and its
differentiable readout), ``trainer`` (transformers ``Trainer`` subclass, checkpoints; its run
loop, ``run_loop``, and its config's run folder, ``run_config``, are shared with trained judges),
``splits`` (disjoint query sets) and ``lambda_select`` (λ on held-out queries).

Only ``config``, ``silver``, ``loss`` and ``splits`` work without the ``train`` extra (peft,
accelerate); the rest import it when used.
"""
