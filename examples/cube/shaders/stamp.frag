#version 450
// The frame's stamp, drawn last over every pixel into alpha only (the
// pipeline's write mask is A): a pixel carries the stamp of frame N only once
// everything frame N draws at that pixel is there. The consumer counts them.
layout(push_constant) uniform Params {
	float angle;
	float aspect;
	float stamp;
	float work;
} pc;

layout(location = 0) out vec4 o_color;

void main()
{
	o_color = vec4(0.0, 0.0, 0.0, pc.stamp / 255.0);
}
