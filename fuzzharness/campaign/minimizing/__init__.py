"""Minimizing a campaign's buckets into verified repros, in one place.

``lanes.py``  :class:`~fuzzharness.campaign.minimizing.lanes.Lanes`, the owner's side: which
              bucket next (severity order, clusters, attachments), budgets, the lane
              processes, the repros table — plain bookkeeping, no TVM;
``lane.py``   one lane process (``python -m fuzzharness.campaign.minimizing.lane``): minimizes
              one bucket at a time, its candidates run in the campaign's workers;
``after.py``  the buckets of a finished campaign (``fuzzharness minimize DIR``, and executors
              that cannot share their workers).
"""
