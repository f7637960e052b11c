"""The local backend: the same JobSet run as local processes, with JAX on the CPU.

``backend`` is the :class:`Backend` seam; ``runner`` runs one JobSet's pods as processes and
restarts them as the JobSet controller would; ``pods`` plans the pods from the manifest,
``localize`` rewrites their coordination for loopback, ``processes`` starts and reaps them,
``secret_files`` stands in for the Secrets they mount.
"""
