module github.com/zkrecipes/zkrecipes

go 1.24
