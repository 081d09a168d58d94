"""What the measurement runs on: where each FFN is (sites), corpora, models (offline wheels, the hub, local files),
model surgery, small models trained from scratch.
"""
