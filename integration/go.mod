module github.com/zkrecipes/zkrecipes/integration

go 1.24

require github.com/zkrecipes/zkrecipes v0.0.0

replace github.com/zkrecipes/zkrecipes => ../
