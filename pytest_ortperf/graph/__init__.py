"""What ONNX Runtime will run for a variant: the optimized graph as figures (op histogram, fusions,
nodes per execution provider, copy nodes, a canonical digest) and the exact rules that compare two.

Plain logic: the graph is built by ``ort/optimized_graph.py``; this package only reads the ONNX protobuf it
wrote. The graph is deterministic (the same model, settings and runtime give the same graph on
every run), so a comparison is exact: nothing here is statistical.
"""
