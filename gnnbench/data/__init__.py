"""Graph datasets: columnar storage, metadata, mini-batching, generators and the catalog of published datasets."""
