"""Node prices read from the clouds' own price APIs (`modelplane prices refresh`).

Pure parts turn documented API responses into price rows: `gce` (Cloud Billing Catalog SKUs),
`ec2` (AWS Price List, Spot price history, Capacity Block offerings); `pricefile` merges rows
into the catalog's price file. `fetch` is the thin glue that calls the official clients, which
come with the optional extra `modelplane[prices]`.
"""
