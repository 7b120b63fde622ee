"""DATCP bench: emulated data-center testbed in network namespaces, flow generator,
paper scenarios and report."""
