"""The items a judge is asked about: frozen records (:mod:`.records`), response sets
(:mod:`.loaders`) and the strict reading of their fields (:mod:`.item_fields`)."""
