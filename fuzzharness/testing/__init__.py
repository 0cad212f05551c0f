"""What the harness's own tests and benchmarks share — nothing a campaign imports.

``schedules``        schedules legal by construction (reassociating; order-preserving);
``wrong_programs``   workloads whose kernel is a deliberately wrong program (a simulated
                     miscompilation), for end-to-end tests of buckets, repros and reports;
``injected_faults``  kernels with one injected fault each (a dropped term, a narrowed
                     accumulator, ...), for measuring what the oracle catches;
``legal_freedoms``   kernels that sum in another legal order or accumulate wider, for
                     checking that a legal freedom is never reported.

The last three are plugins: a worker loads them with ``FUZZHARNESS_PLUGINS=
fuzzharness.testing.wrong_programs`` (their workloads are drawn only when named).
"""
