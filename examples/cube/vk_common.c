/* SPDX-License-Identifier: MIT */
#include "vk_common.h"

int
cube_vk_init(struct vkt *vk, const char *who)
{
	struct vkt_config cfg = {
		.who = who,
		.app_name = "syncbridge-demo-cube",
		.require = VKT_DMABUF | VKT_DRM_MODIFIER,
		.want = VKT_FOREIGN,
		.features = VKT_DYNAMIC_RENDERING,
		.fail = vkt_fail_print,
	};
	return vkt_create(vk, &cfg);
}

int
cube_vk_import_image(struct vkt *vk, int dmabuf_fd, uint32_t width, uint32_t height, uint32_t pitch,
		     uint32_t offset, VkImageUsageFlags usage, struct vkt_image *img)
{
	struct vkt_image_desc desc = {
		.format = VK_FORMAT_B8G8R8A8_UNORM, /* DRM_FORMAT_ARGB8888 */
		.width = width,
		.height = height,
		.usage = usage,
		.explicit_layout = true,
		.pitch = pitch,
		.offset = offset,
	};
	return vkt_import_image(vk, dmabuf_fd, &desc, img) == VK_SUCCESS ? 0 : -EIO;
}
