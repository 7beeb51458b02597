"""The judges: the interface, registry and identity (:mod:`.base`), the generative judge
(:mod:`.generative`, on :mod:`.generation`), the one-pass verdict readout (:mod:`.readout`), the
generative judge against a server (:mod:`.api`), the order-free reward model (:mod:`.reward`) and a
scripted judge with known noise
(:mod:`.scripted`). :mod:`presentation_dependence.judge` imports them all, which registers them."""
