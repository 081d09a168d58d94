"""The lowest layer: errors, files (sha256 manifests, atomic writes), the cache and its entries, threads, progress."""
