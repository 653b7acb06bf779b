module fanout-gateway/subtools/native

go 1.21
