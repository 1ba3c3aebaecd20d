package x

import "context"

//idem:max_result=10XB
func A(ctx context.Context, id string) (string, error) { return id, nil }

//idem:max_result=0
func B(ctx context.Context, id string) (string, error) { return id, nil }
