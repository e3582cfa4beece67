package awsapi

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// Inventory lists the endpoints and the inference components of the region, then
// describes each and reads its tags (a few calls at a time). An endpoint or IC deleted
// between the listing and its description is left out. Without the permission to list or
// describe ICs, the endpoints are still returned, with ComponentsErr set; without the one to
// read tags, the resources without their tags, with TagsErr set.
func (c *client) Inventory(ctx context.Context) (Inventory, error) {
	summaries, err := c.listEndpoints(ctx)
	if err != nil {
		return Inventory{}, err
	}
	var mu sync.Mutex
	var componentsErr, tagsErr error
	// tagsOf reads a resource's tags; a missing permission leaves them out (noted once).
	tagsOf := func(ctx context.Context, arn string) (map[string]string, error) {
		tags, err := c.listTags(ctx, arn)
		if IsPermission(err) {
			mu.Lock()
			tagsErr = cmp.Or(tagsErr, err)
			mu.Unlock()
			return nil, nil
		}
		return tags, unlessGone(err)
	}
	ics, err := c.listComponents(ctx)
	if IsPermission(err) {
		ics, componentsErr = nil, err
	} else if err != nil {
		return Inventory{}, err
	}
	endpoints := make([]*Endpoint, len(summaries))
	components := make([]*Component, len(ics))
	err = each(ctx, len(summaries)+len(ics), c.parallel, func(ctx context.Context, i int) error {
		if i < len(summaries) {
			e, err := c.describeEndpoint(ctx, summaries[i])
			if e != nil && err == nil {
				e.Tags, err = tagsOf(ctx, e.ARN)
			}
			endpoints[i] = e
			return err
		}
		ic, err := c.describeComponent(ctx, ics[i-len(summaries)])
		if IsPermission(err) {
			// A policy may allow some ICs only: keep those it allows.
			mu.Lock()
			componentsErr = cmp.Or(componentsErr, err)
			mu.Unlock()
			return nil
		}
		if ic != nil && err == nil {
			ic.Tags, err = tagsOf(ctx, ic.ARN)
		}
		components[i-len(summaries)] = ic
		return err
	})
	if err != nil {
		return Inventory{}, err
	}
	inv := Inventory{Region: c.region, ComponentsErr: componentsErr, TagsErr: tagsErr}
	byName := map[string]int{}
	for _, e := range endpoints {
		if e != nil {
			byName[e.Name] = len(inv.Endpoints)
			inv.Endpoints = append(inv.Endpoints, *e)
		}
	}
	for _, ic := range components {
		if ic == nil {
			continue
		}
		if i, ok := byName[ic.Endpoint]; ok {
			inv.Endpoints[i].Components = append(inv.Endpoints[i].Components, *ic)
		}
	}
	slices.SortFunc(inv.Endpoints, func(a, b Endpoint) int { return strings.Compare(a.Name, b.Name) })
	for i := range inv.Endpoints {
		slices.SortFunc(inv.Endpoints[i].Components, func(a, b Component) int { return strings.Compare(a.Name, b.Name) })
	}
	return inv, nil
}

// ProbeInventory lists one endpoint, which needs the permission the inventory starts with.
func (c *client) ProbeInventory(ctx context.Context) error {
	_, err := call(ctx, c, ActionListEndpoints, func(ctx context.Context) (*sagemaker.ListEndpointsOutput, error) {
		return c.sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{MaxResults: aws.Int32(1)})
	})
	return err
}

func (c *client) listEndpoints(ctx context.Context) ([]smtypes.EndpointSummary, error) {
	pages := sagemaker.NewListEndpointsPaginator(c.sm, &sagemaker.ListEndpointsInput{MaxResults: aws.Int32(100)},
		func(o *sagemaker.ListEndpointsPaginatorOptions) { o.StopOnDuplicateToken = true })
	return drain[*sagemaker.ListEndpointsOutput, sagemaker.Options](ctx, c, ActionListEndpoints, pages,
		func(p *sagemaker.ListEndpointsOutput) []smtypes.EndpointSummary { return p.Endpoints })
}

func (c *client) listComponents(ctx context.Context) ([]smtypes.InferenceComponentSummary, error) {
	pages := sagemaker.NewListInferenceComponentsPaginator(c.sm, &sagemaker.ListInferenceComponentsInput{MaxResults: aws.Int32(100)},
		func(o *sagemaker.ListInferenceComponentsPaginatorOptions) { o.StopOnDuplicateToken = true })
	return drain[*sagemaker.ListInferenceComponentsOutput, sagemaker.Options](ctx, c, ActionListInferenceComponents, pages,
		func(p *sagemaker.ListInferenceComponentsOutput) []smtypes.InferenceComponentSummary {
			return p.InferenceComponents
		})
}

// describeEndpoint returns nil, nil for an endpoint that no longer exists.
func (c *client) describeEndpoint(ctx context.Context, s smtypes.EndpointSummary) (*Endpoint, error) {
	d, err := call(ctx, c, ActionDescribeEndpoint, func(ctx context.Context) (*sagemaker.DescribeEndpointOutput, error) {
		return c.sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: s.EndpointName})
	})
	if err != nil {
		return nil, unlessGone(err)
	}
	var cfg *sagemaker.DescribeEndpointConfigOutput
	if d.EndpointConfigName != nil {
		cfg, err = call(ctx, c, ActionDescribeEndpointConfig, func(ctx context.Context) (*sagemaker.DescribeEndpointConfigOutput, error) {
			return c.sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: d.EndpointConfigName})
		})
		if err != nil && unlessGone(err) != nil {
			return nil, err
		}
	}
	e := endpointOf(d, cfg)
	return &e, nil
}

// describeComponent returns nil, nil for an IC that no longer exists.
func (c *client) describeComponent(ctx context.Context, s smtypes.InferenceComponentSummary) (*Component, error) {
	d, err := call(ctx, c, ActionDescribeInferenceComponent, func(ctx context.Context) (*sagemaker.DescribeInferenceComponentOutput, error) {
		return c.sm.DescribeInferenceComponent(ctx, &sagemaker.DescribeInferenceComponentInput{InferenceComponentName: s.InferenceComponentName})
	})
	if err != nil {
		return nil, unlessGone(err)
	}
	ic := componentOf(s, d)
	return &ic, nil
}

// listTags reads a resource's tags, every page; nil when it has none.
func (c *client) listTags(ctx context.Context, arn string) (map[string]string, error) {
	pages := sagemaker.NewListTagsPaginator(c.sm, &sagemaker.ListTagsInput{ResourceArn: aws.String(arn), MaxResults: aws.Int32(50)},
		func(o *sagemaker.ListTagsPaginatorOptions) { o.StopOnDuplicateToken = true })
	tags, err := drain[*sagemaker.ListTagsOutput, sagemaker.Options](ctx, c, ActionListTags, pages,
		func(p *sagemaker.ListTagsOutput) []smtypes.Tag { return p.Tags })
	if err != nil || len(tags) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out, nil
}

// unlessGone drops the error SageMaker gives for a resource deleted meanwhile
// (ValidationException "Could not find ...", or ResourceNotFound).
func unlessGone(err error) error {
	e, ok := asError(err)
	if ok && (e.Code == "ResourceNotFound" || (e.Code == "ValidationException" && strings.Contains(e.Message, "Could not find"))) {
		return nil
	}
	return err
}
