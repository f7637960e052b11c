"""What the tests and the benches both run: the real control plane harness, the Kubernetes and
GCS emulators, and the JobSets and triggerer they drive. Outside ``tests/`` so ``bench/`` and
``make cluster`` never import a test module."""
